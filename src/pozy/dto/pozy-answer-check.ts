import Ajv, { type ValidateFunction } from 'ajv';
import { isISO8601 } from 'class-validator';

/**
 * Compiled checks of Pozy's posts and accounts, for the paths that read them by the thousand (an import's pages,
 * every reconcile's read). Each schema says what its class-validator DTO (pozy-post.dto.ts, pozy-account.dto.ts)
 * says, field by field: the DTO stays the authority. An answer these checks accept, the DTO accepts too; one they do
 * not accept goes through the DTO, which accepts it or names what is wrong exactly as before (pozy-client.service.ts).
 */

/** `@IsString() @IsNotEmpty()`. */
const text = { type: 'string', minLength: 1 } as const;
/** `@IsOptional() @IsString()`: absent, null, or a string. */
const optionalText = { type: ['string', 'null'] } as const;
/** `@IsOptional() @IsISO8601()`: absent, null, or a string validator.js takes for ISO 8601 (the format applies to strings only). */
const optionalDate = { type: ['string', 'null'], format: 'iso8601' } as const;
/** `@IsOptional() @IsBoolean()`. */
const optionalFlag = { type: ['boolean', 'null'] } as const;
/** `@Transform(populatedId) @IsString() @IsNotEmpty()`: the id, or the referenced object with its id. */
const reference = { anyOf: [text, { type: 'object', required: ['_id'], properties: { _id: text } }] } as const;

const target = {
  type: 'object',
  required: ['platform', 'accountId', 'status'],
  properties: {
    platform: text,
    accountId: reference,
    status: text,
    platformPostId: optionalText,
    platformPostUrl: optionalText,
    publishedAt: optionalDate,
    errorMessage: optionalText,
  },
} as const;

const post = {
  type: 'object',
  required: ['_id', 'status', 'platforms', 'createdAt', 'updatedAt'],
  properties: {
    _id: text,
    status: text,
    content: optionalText,
    scheduledFor: optionalDate,
    publishedAt: optionalDate,
    platforms: { type: 'array', items: target },
    createdAt: { type: 'string', format: 'iso8601' },
    updatedAt: { type: 'string', format: 'iso8601' },
  },
} as const;

const account = {
  type: 'object',
  required: ['_id', 'platform', 'profileId', 'isActive'],
  properties: {
    _id: text,
    platform: text,
    profileId: reference,
    username: optionalText,
    displayName: optionalText,
    isActive: { type: 'boolean' },
    needsReconnection: optionalFlag,
  },
} as const;

// No error details: a rejected answer is checked again by its DTO, which names what is wrong.
const ajv = new Ajv({ allErrors: false, allowUnionTypes: true, messages: false, formats: { iso8601: (value: string) => isISO8601(value) } });
const checkPost: ValidateFunction = ajv.compile(post);
const checkAccount: ValidateFunction = ajv.compile(account);

/**
 * class-transformer leaves out a key named `__proto__` or `constructor` at any depth (and fails on some objects
 * holding one): an answer with one anywhere goes the DTO's way, so that what is kept stays what it kept.
 */
function plainKeysOnly(value: unknown): boolean {
  if (Array.isArray(value)) {
    for (const item of value) if (!plainKeysOnly(item)) return false;
    return true;
  }
  if (typeof value !== 'object' || value === null) return true;
  for (const key in value) {
    if (key === '__proto__' || key === 'constructor') return false;
    if (!plainKeysOnly((value as Record<string, unknown>)[key])) return false;
  }
  return true;
}

/** The id a reference holds, as populatedId (populated-id.ts) takes it. */
const referenced = (value: unknown): unknown => (typeof value === 'object' && value !== null && '_id' in value ? value._id : value);

/**
 * The post as the DTO's transformation gives it (each target's populated `accountId` replaced by its id), made in
 * place in the parsed answer, which nothing else holds; undefined when the compiled check does not accept it.
 */
export function checkedPost(value: object): object | undefined {
  if (!checkPost(value) || !plainKeysOnly(value)) return undefined;
  for (const target of (value as { platforms: Array<{ accountId: unknown }> }).platforms) target.accountId = referenced(target.accountId);
  return value;
}

/** The account, its populated `profileId` replaced by its id, as checkedPost does for posts. */
export function checkedAccount(value: object): object | undefined {
  if (!checkAccount(value) || !plainKeysOnly(value)) return undefined;
  const fields = value as { profileId: unknown };
  fields.profileId = referenced(fields.profileId);
  return value;
}
