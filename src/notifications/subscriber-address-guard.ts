import { LookupAddress, promises as dns } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { Injectable, Logger } from '@nestjs/common';
import { buildConnector } from 'undici';
import { AppConfig } from '../config/app-config';
import { ALLOW_HINT, AddressPolicy } from './address-policy';

/** A notification's connection refused before it was made: the subscriber's address is an internal one. */
export class ForbiddenAddressError extends Error {
  readonly code = 'ERR_FORBIDDEN_ADDRESS';

  constructor(why: string) {
    super(`${why}: refused before connecting (${ALLOW_HINT})`);
    this.name = 'ForbiddenAddressError';
  }
}

/** The system resolver, as connecting uses it; its own provider so that a test can answer in its place. */
@Injectable()
export class HostResolver {
  lookup(hostname: string): Promise<LookupAddress[]> {
    return dns.lookup(hostname, { all: true });
  }
}

/**
 * Keeps change notifications away from loopback, private, link-local and cloud metadata addresses (SSRF): a
 * subscription's URL is judged when it is created or changed, and every connection again, on the addresses it is
 * actually about to use, since a name can resolve elsewhere later.
 */
@Injectable()
export class SubscriberAddressGuard {
  private readonly logger = new Logger(SubscriberAddressGuard.name);
  private readonly policy: AddressPolicy;

  constructor(
    private readonly config: AppConfig,
    private readonly resolver: HostResolver,
  ) {
    this.policy = new AddressPolicy(config.notify.allowedHosts);
  }

  /**
   * Why a subscription may not have this URL, or undefined. A name is resolved now too, so that one pointing
   * inside is refused at once; one that does not resolve (yet, or not from here) is accepted, since every
   * connection is checked again.
   */
  async refusalOf(url: string): Promise<string | undefined> {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      // The URL check (validator.js) lets through forms the WHATWG parser, which every connection uses, refuses: an IPv6
      // zone with a bad escape (`[::%zz1]`), say.
      return 'url must be an http:// or https:// URL (this one does not parse as a URL, WHATWG URL Standard)';
    }
    if (parsed.username !== '' || parsed.password !== '') {
      return 'url must not carry credentials (user:password@): they would never be sent; subscribers authenticate notifications by their signature';
    }
    const judged = this.policy.judgeHost(parsed.hostname);
    if (judged.verdict === 'refused') return `url must not point inside: ${judged.why} (${ALLOW_HINT})`;
    if (judged.verdict === 'allowed') return undefined;
    const refused = this.policy.refusalOfAnswers(parsed.hostname, await this.resolve(parsed.hostname));
    return refused && `url must not point inside: ${parsed.hostname} resolves to ${refused.address}, and ${refused.why} (${ALLOW_HINT})`;
  }

  /**
   * undici's connector for subscribers: an address literal is judged before connecting, a name's addresses as the
   * resolver answers them (every one must be allowed), and the socket's own peer once connected, in case anything
   * reached an address some other way.
   */
  connector(timeoutMs: number): buildConnector.connector {
    const connect = buildConnector({ timeout: timeoutMs, lookup: this.lookup });
    return (options, callback) => {
      const judged = this.policy.judgeHost(options.hostname);
      if (judged.verdict === 'refused') return callback(new ForbiddenAddressError(judged.why), null);
      connect(options, (error, socket) => {
        if (error) return callback(error, null);
        const peer = socket.remoteAddress;
        const why = judged.verdict === 'resolve' && peer ? this.policy.refusalOf(peer) : undefined;
        if (!why) return callback(null, socket);
        socket.destroy();
        callback(new ForbiddenAddressError(`${options.hostname} connected to ${why}`), null);
      });
    };
  }

  /** net.connect's `lookup`, for names only (net never resolves an address literal): refuses a name pointing inside. */
  private readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.resolver.lookup(hostname).then(
      (answers) => {
        const refused = this.policy.refusalOfAnswers(hostname, answers);
        if (refused) return callback(new ForbiddenAddressError(`${hostname} resolves to ${refused.address}, and ${refused.why}`), '', 0);
        const wanted = answers.filter((a) => !options.family || a.family === options.family || options.family === `IPv${a.family}`);
        if (wanted.length === 0) {
          const error: NodeJS.ErrnoException = new Error(`${hostname} has no address of the family asked for`);
          error.code = 'ENOTFOUND';
          return callback(error, '', 0);
        }
        if (options.all) return callback(null, wanted);
        callback(null, wanted[0].address, wanted[0].family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };

  /** The name's addresses, or none when it does not resolve within the notification timeout. */
  private async resolve(hostname: string): Promise<LookupAddress[]> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), this.config.notify.timeoutMs)));
    try {
      const answer = await Promise.race([this.resolver.lookup(hostname), timeout]);
      if (answer === 'timeout') {
        this.logger.warn(`${hostname} did not resolve within ${this.config.notify.timeoutMs} ms; its addresses are checked when connecting`);
        return [];
      }
      return answer;
    } catch (error) {
      this.logger.warn(`${hostname} does not resolve (${(error as Error).message}); its addresses are checked when connecting`);
      return [];
    } finally {
      clearTimeout(timer);
    }
  }
}
