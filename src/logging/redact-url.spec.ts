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
    ['/posts?admin-token-0123456789=1', '/posts?[redacted]'],
    ['/posts?q=%zz&limit=2', '/posts?q=%zz&limit=2'],
    ['/posts?q=spring+sale&tag=a,b', '/posts?q=spring+sale&tag=a,b'],
    ['/health/ready', '/health/ready'],
  ])('%s is logged as %s', (url, logged) => {
    expect(redactUrl(url, SECRETS)).toBe(logged);
  });

  it("redacts a workspace's key or secret where a whole value is one", () => {
    const workspaces = new Set(['sk_workspace_key_1', 'a-secret-the-operator-chose']);
    expect(redactUrl('/posts/sk_workspace_key_1?q=a-secret-the-operator-chose&limit=1', SECRETS, workspaces)).toBe(
      '/posts/[redacted]?q=[redacted]&limit=1',
    );
    expect(redactUrl('/posts?q=sale', SECRETS, workspaces)).toBe('/posts?q=sale');
  });

  describe('a token made with POST /admin/tokens, known by its form alone', () => {
    const MADE = 'pzs_uT-lv2k385rGdbBIEHCxMlX8BGu69jpzA5I0ZbA582Q';

    it.each([
      ['in a path, where its id belongs', `/admin/tokens/${MADE}`, '/admin/tokens/[redacted]'],
      ['in a query value', `/posts?q=${MADE}&limit=1`, '/posts?q=[redacted]&limit=1'],
      ['after Bearer in a query value', `/posts?q=Bearer%20${MADE}`, '/posts?q=[redacted]'],
      ['as a query parameter name', `/posts?${MADE}`, '/posts?[redacted]'],
      ['the prefix alone: kept', '/posts?q=pzs_short', '/posts?q=pzs_short'],
    ])('%s: %s is logged as %s', (_case, url, logged) => {
      expect(redactUrl(url, SECRETS)).toBe(logged);
    });
  });

  describe('a secret holding + or / (an API_TOKENS entry, a base64 key), however the client spelled it', () => {
    const TOKEN = 'rd+Tok/9xYzAbCdEf==';
    const KEY = 'u+Zp/0Qm3kX9+Lr/Tw7YbN2cVh8sJd4aEf6gHi1jKo0=';

    it.each([
      ['as sent, in a query value', '/posts?q=rd+Tok/9xYzAbCdEf==&limit=1', '/posts?q=[redacted]&limit=1'],
      ['inside a query value', '/posts?q=Bearer+rd+Tok/9xYzAbCdEf==', '/posts?q=[redacted]'],
      ['percent-encoded', '/posts?q=rd%2BTok%2F9xYzAbCdEf%3D%3D', '/posts?q=[redacted]'],
      ['percent-encoded in lower case', '/posts?q=rd%2bTok%2f9xYzAbCdEf%3d%3d', '/posts?q=[redacted]'],
      ['with its + become a space', '/posts?q=rd%20Tok%2F9xYzAbCdEf==', '/posts?q=[redacted]'],
      ['as a query parameter name', '/posts?rd+Tok/9xYzAbCdEf==&limit=1', '/posts?[redacted]&limit=1'],
      ['as path segments, as sent', '/posts/rd+Tok/9xYzAbCdEf==?limit=1', '/posts/[redacted]?limit=1'],
      ['as a path segment, percent-encoded', '/posts/rd%2BTok%2F9xYzAbCdEf%3D%3D', '/posts/[redacted]'],
      ['as a path segment, half encoded', '/posts/rd+Tok%2F9xYzAbCdEf==/x', '/posts/[redacted]/x'],
      ['a key across three path segments', `/accounts/${KEY}/x`, '/accounts/[redacted]/x'],
      ['a key in a query value', `/posts?q=${encodeURIComponent(KEY)}`, '/posts?q=[redacted]'],
      ['a key with its + become spaces', `/posts?q=${KEY.replace(/\+/g, '%20')}`, '/posts?q=[redacted]'],
      ['only part of it: kept', '/posts/Tok/9xYzAbCdEf==?q=rd', '/posts/Tok/9xYzAbCdEf==?q=rd'],
      ['segments around it: kept', '/posts/abc/def?q=a+b', '/posts/abc/def?q=a+b'],
    ])('%s: %s is logged as %s', (_case, url, logged) => {
      expect(redactUrl(url, [...SECRETS, TOKEN, KEY])).toBe(logged);
    });
  });
});
