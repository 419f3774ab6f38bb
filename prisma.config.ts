// Used by the Prisma CLI only (generate; migrate deploy/status on machines that have Prisma's engines).
// The service itself applies prisma/migrations with src/database/migrator.ts.
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/pozy_sync' },
});
