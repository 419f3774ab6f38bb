import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { SecretKeyError } from '../common/secret-box';
import { AppConfig } from '../config/app-config';
import { SubscriptionRepository } from './subscription.repository';

/**
 * At boot (after migrations, before any worker runs): every subscription secret in use must decrypt with
 * SECRETS_ENCRYPTION_KEY, else the service refuses to start, naming the key ids; a key that is missing or wrong would
 * otherwise only show as notifications that cannot be signed. Warns of what is stored in plaintext.
 */
@Injectable()
export class SecretsAtRest implements OnModuleInit {
  private readonly logger = new Logger(SecretsAtRest.name);

  constructor(
    private readonly subscriptions: SubscriptionRepository,
    private readonly config: AppConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    const census = await this.subscriptions.secretsCensus();
    const problems = census.flatMap(({ keyId, count, sample }) => {
      if (keyId === null) return [];
      try {
        this.subscriptions.checkOpens(sample);
        return [];
      } catch (error) {
        if (!(error instanceof SecretKeyError)) throw error;
        return [`${count} secret(s) encrypted with key "${keyId}": ${error.message}`];
      }
    });
    if (problems.length > 0) {
      throw new SecretKeyError(
        `Subscription secrets cannot be decrypted with SECRETS_ENCRYPTION_KEY: ${problems.join('; ')}. It must hold every key the stored secrets use (docs/security.md, "Secrets")`,
      );
    }
    const keys = this.config.secretsEncryptionKeys;
    const plaintext = census.find((group) => group.keyId === null)?.count ?? 0;
    if (keys.length === 0) {
      this.logger.warn(
        'SECRETS_ENCRYPTION_KEY is not set: subscription secrets are stored in the database in plaintext. Set it (required when NODE_ENV=production), then run npm run secrets:reencrypt.',
      );
      return;
    }
    if (plaintext > 0) {
      this.logger.warn(`${plaintext} subscription secret(s) are stored in plaintext: run npm run secrets:reencrypt to encrypt them`);
    }
    const older = census.filter((group) => group.keyId !== null && group.keyId !== keys[0].id);
    if (older.length > 0) {
      const counts = older.map((group) => `${group.count} with key "${group.keyId}"`).join(', ');
      this.logger.log(`Subscription secrets on older keys (${counts}): npm run secrets:reencrypt moves them to key "${keys[0].id}"`);
    }
  }
}
