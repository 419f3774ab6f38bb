export default async function globalTeardown(): Promise<void> {
  await globalThis.__EMBEDDED_TEST_DATABASE__?.stop();
}
