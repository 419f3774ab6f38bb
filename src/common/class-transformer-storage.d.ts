// class-transformer ships its metadata storage as cjs/storage.js with the types beside it under types/: the compiled
// query check (compiled-query-check.ts) reads the `@Transform`s from the same storage class-transformer does.
declare module 'class-transformer/cjs/storage' {
  export * from 'class-transformer/types/storage';
}
