// A minimal pozy-sync change-notification receiver: plain Node.js and the `standardwebhooks` package.
//   POZY_SYNC_SECRET=whsec_... PORT=4000 node examples/notification-receiver.mjs
// Subscribe it: curl -X POST localhost:3000/admin/subscriptions -H "Authorization: Bearer $ADMIN_TOKEN" \
//   -H 'Content-Type: application/json' -d '{"url":"http://localhost:4000/pozy","eventTypes":["post.changed"]}'
import { createServer } from 'node:http';
import { Webhook } from 'standardwebhooks';

const webhook = new Webhook(process.env.POZY_SYNC_SECRET);
// Ids already handled. A real receiver keeps these in its database, written in the transaction that acts on them.
const handled = new Set();

createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8'); // verify the exact bytes, before parsing
    let event;
    try {
      // Checks webhook-signature over `${webhook-id}.${webhook-timestamp}.${body}` and a timestamp within 5 minutes.
      event = webhook.verify(body, req.headers);
    } catch (error) {
      res.writeHead(401).end();
      console.log(`rejected: ${error.message}`);
      return;
    }
    const id = req.headers['webhook-id'];
    if (!handled.has(id)) {
      handled.add(id);
      const { type, data } = event;
      // data: { id, sequence, pozyUpdatedAt, post | account }. Per resource, keep the highest sequence you have seen.
      console.log(`verified ${type} ${data.id} sequence ${data.sequence} (${id})`);
    }
    res.writeHead(204).end(); // any 2xx acknowledges; anything else is retried with backoff
  });
}).listen(Number(process.env.PORT ?? 4000), '127.0.0.1', () => console.log('listening'));
