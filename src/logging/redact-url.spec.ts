import { redactUrl } from './redact-url';

const SECRETS = ['admin-token-0123456789', 'sk_live_abcdef'];

describe('redactUrl', () => {
  it.each([
    ['/posts?token=abc&limit=5', '/posts?token=[redacted]&limit=5'],
    [
      '/posts?access_token=abc&API_KEY=x&password=p&sig=1&X-Signature=s&Authorization=a',
      '/posts?access_token=[redacted]&API_KEY=[redacted]&password=[redacted]&sig=1&X-Signature=[redacted]&Authorization=[redacted]',
    ],
    ['/posts?ap%69_key=abc', '/posts?ap%69_key=[redacted]'],
    ['/posts?q=admin-token-0123456789', '/posts?q=[redacted]'],
    ['/posts?q=Bearer%20admin-token-0123456789', '/posts?q=[redacted]'],
    ['/posts?q=sk_live_abcdef&q=sale', '/posts?q=[redacted]&q=sale'],
    ['/posts/sk_live_abcdef?limit=1', '/posts/[redacted]?limit=1'],
    ['/posts?admin-token-0123456789', '/posts?[redacted]'],
    ['/posts?q=%zz&limit=2', '/posts?q=%zz&limit=2'],
    ['/posts?q=spring+sale&tag=a,b', '/posts?q=spring+sale&tag=a,b'],
    ['/health/ready', '/health/ready'],
  ])('%s is logged as %s', (url, logged) => {
    expect(redactUrl(url, SECRETS)).toBe(logged);
  });
});
