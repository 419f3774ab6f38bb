/**
 * Every secret this repository publishes as an example or a default: anyone who has read the repository knows them,
 * so NODE_ENV=production refuses each, in whichever variable it turns up. `known-examples.spec.ts` scans the files
 * that show values (docker-compose.yml, compose.simulator.env, README.md, docs/, the Dockerfile, examples/, the
 * simulator and the demo) and fails when one holds a secret missing here.
 */
export const KNOWN_EXAMPLE_SECRETS: readonly string[] = Object.freeze([
  // compose.simulator.env: docker-compose.yml's simulator profile.
  'pozy',
  'sk_sim_local',
  'whsec_simulator_secret',
  'simulator-admin-token',
  'compose-default:R7eJBfmLk1iI6g0jr0xLz7jxo/oFMallut9ptXYU3sE=',
  // The simulator's keys of the workspaces it adds (simulator/main.ts: SIMULATOR_WORKSPACE_KEY_PREFIX).
  'sk_sim_ws',
  // The demo (demo/demo.ts).
  'sk_sim_demo',
  'whsec_demo',
  'demo-admin-token',
  'demo-read-token-7c1e',
  // Its added workspaces' keys (sk_sim_client_<n>) and the key that seals them.
  'sk_sim_client_',
  'demo:KioqKioqKioqKioqKioqKioqKioqKioqKioqKioqKio=',
  // Defaults of earlier versions of docker-compose.yml and README.md: published, although no file holds them now.
  'change-me',
  'sk_test_local',
]);

/** The base64 of a 32-byte key, as SECRETS_ENCRYPTION_KEY carries one after its key id. */
const KEY_MATERIAL = /^(?:[A-Za-z0-9_-]{1,32}:)?([A-Za-z0-9+/]{43}=)$/;

/** The published encryption keys' base64, without their key ids. */
const KEYS_BASE64 = KNOWN_EXAMPLE_SECRETS.flatMap((value) => KEY_MATERIAL.exec(value)?.[1] ?? []);
/** The same keys' bytes (hex): a published key is known under any key id, in any base64 spelling. */
const KNOWN_KEYS = new Set(KEYS_BASE64.map((base64) => hexOf(base64)));

function hexOf(base64: string): string {
  return Buffer.from(base64, 'base64').toString('hex');
}

/** Whether a secret is one of the repository's own examples (a published key's base64 included, in any variable). */
export function isKnownExample(value: string): boolean {
  return KNOWN_EXAMPLE_SECRETS.includes(value) || KEYS_BASE64.includes(value);
}

/** Whether an encryption key is one the repository publishes. */
export function isKnownKey(key: Buffer): boolean {
  return KNOWN_KEYS.has(key.toString('hex'));
}
