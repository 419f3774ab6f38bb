export { freePort } from '../../src/bench/net';
