export { freePort } from '../../bench/net';
