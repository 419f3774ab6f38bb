import { ArgumentMetadata, Type, ValidationPipe, ValidationPipeOptions } from '@nestjs/common';
import { TransformationType } from 'class-transformer';
import { defaultMetadataStorage } from 'class-transformer/cjs/storage';
import { getMetadataStorage, ValidationArguments, ValidationTypes } from 'class-validator';

/** A query DTO's instance when the query is valid; `undefined` when it is not, or not of a shape the check knows. */
export type QueryCheck = (query: unknown) => object | undefined;

type Rule = (instance: object, value: unknown) => boolean;

interface Property {
  /** The class-transformer `@Transform`s of the property, in order. */
  transforms: Array<(value: unknown, query: object) => unknown>;
  /** `@IsOptional()` and the like: every one must hold for the rules to apply. */
  conditions: Rule[];
  rules: Rule[];
}

const isPromise = (value: unknown): boolean => typeof (value as { then?: unknown } | null)?.then === 'function';

/**
 * The check of a query DTO, compiled once from its class-validator and class-transformer metadata: for a query string
 * (text values, or lists of them), the same `@Transform`s and the same constraint functions the global ValidationPipe
 * runs (whitelist, forbidNonWhitelisted, transform), without its per-request metadata walk. It only accepts: a query it
 * does not accept goes through the ValidationPipe, which names the problem exactly as before (or accepts it after
 * all). `null` for a class using anything the check does not reproduce (nested objects, `@Type`, `@Expose`, groups,
 * accessors), which the pipe alone validates.
 */
export function compileQueryCheck(metatype: Type): QueryCheck | null {
  const metadatas = getMetadataStorage().getTargetValidationMetadatas(metatype, '', false, false, undefined);
  if (metadatas.length === 0) return null;
  const supported = new Set<string>([
    ValidationTypes.CUSTOM_VALIDATION,
    ValidationTypes.CONDITIONAL_VALIDATION,
    ValidationTypes.IS_DEFINED,
    ValidationTypes.WHITELIST,
  ]);
  if (metadatas.some((m) => !supported.has(m.type) || (m.groups?.length ?? 0) > 0 || m.always === true)) return null;
  for (
    let proto: object | null = metatype.prototype as object;
    proto && proto !== Object.prototype;
    proto = Object.getPrototypeOf(proto) as object | null
  ) {
    // A getter or method would be skipped by class-transformer; exposed or typed properties are converted by it.
    if (Object.getOwnPropertyNames(proto).some((name) => name !== 'constructor')) return null;
    const target = (proto as { constructor: Type }).constructor;
    if (defaultMetadataStorage.getExposedMetadatas(target).length > 0 || defaultMetadataStorage.getExcludedMetadatas(target).length > 0) return null;
  }
  const properties = new Map<string, Property>();
  for (const [name, own] of Object.entries(getMetadataStorage().groupByPropertyName(metadatas))) {
    if (defaultMetadataStorage.findTypeMetadata(metatype, name)) return null;
    const transforms = defaultMetadataStorage.findTransformMetadatas(metatype, name, TransformationType.PLAIN_TO_CLASS);
    if (transforms.some((t) => t.options && Object.keys(t.options).length > 0)) return null;
    const property: Property = {
      transforms: transforms.map(
        (t) => (value, query) => t.transformFn({ value, key: name, obj: query, type: TransformationType.PLAIN_TO_CLASS, options: {} }) as unknown,
      ),
      conditions: [],
      rules: [],
    };
    for (const metadata of own) {
      if (metadata.type === ValidationTypes.CONDITIONAL_VALIDATION) {
        const condition = metadata.constraints[0] as (instance: object, value: unknown) => boolean;
        property.conditions.push((instance, value) => condition(instance, value));
        continue;
      }
      if (metadata.type === ValidationTypes.WHITELIST) continue;
      for (const constraint of getMetadataStorage().getTargetValidatorConstraints(metadata.constraintCls)) {
        if (constraint.async) return null;
        const { instance: validator } = constraint;
        const validateIf = metadata.validateIf;
        property.rules.push((instance, value) => {
          if (validateIf && !validateIf(instance, value)) return true;
          const args: ValidationArguments = { targetName: metatype.name, property: name, object: instance, value, constraints: metadata.constraints };
          if (metadata.each && (value instanceof Set || value instanceof Map)) return false;
          const results =
            metadata.each && Array.isArray(value) ? value.map((item) => validator.validate(item, args)) : [validator.validate(value, args)];
          return results.every((result) => !isPromise(result) && Boolean(result));
        });
      }
    }
    properties.set(name, property);
  }
  return (query) => {
    if (typeof query !== 'object' || query === null || Array.isArray(query)) return undefined;
    const instance = new metatype() as Record<string, unknown>;
    for (const key of Object.keys(query)) {
      const property = properties.get(key);
      if (!property) return undefined;
      let value = (query as Record<string, unknown>)[key];
      // What a query string holds; class-transformer copies a list.
      if (Array.isArray(value)) {
        if (!value.every((item) => typeof item === 'string')) return undefined;
        value = [...value];
      } else if (typeof value !== 'string') return undefined;
      for (const transform of property.transforms) value = transform(value, query);
      instance[key] = value;
    }
    // forbidNonWhitelisted looks at the instance's own keys, which its constructor may add to.
    for (const key of Object.keys(instance)) if (!properties.has(key)) return undefined;
    for (const [name, property] of properties) {
      const value = instance[name];
      if (!property.conditions.every((condition) => condition(instance, value))) continue;
      if (!property.rules.every((rule) => rule(instance, value))) return undefined;
    }
    return instance;
  };
}

/**
 * The global ValidationPipe (unknown parameters refused, every problem named, values transformed), with a compiled
 * check for query DTOs (compileQueryCheck): a valid query string costs microseconds rather than class-transformer's and
 * class-validator's walks of the metadata on every request; anything else is the ValidationPipe's to answer.
 */
export class QueryValidationPipe extends ValidationPipe {
  private readonly checks = new Map<Type, QueryCheck | null>();

  constructor(exceptionFactory: NonNullable<ValidationPipeOptions['exceptionFactory']>) {
    // The options the compiled check reproduces: do not change one without the other.
    super({ whitelist: true, forbidNonWhitelisted: true, transform: true, exceptionFactory });
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const { metatype } = metadata;
    if (metadata.type === 'query' && metatype && this.toValidate(metadata)) {
      let check = this.checks.get(metatype);
      if (check === undefined) this.checks.set(metatype, (check = compileQueryCheck(metatype)));
      const accepted = check?.(value);
      if (accepted !== undefined) return accepted;
    }
    return super.transform(value, metadata);
  }
}
