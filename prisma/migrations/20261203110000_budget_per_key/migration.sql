-- The Pozy budget becomes one row per API key, keyed by the key's identity (the first 32 hex digits of its SHA-256,
-- src/pozy/budget/budget-key.ts), never the key. The migration cannot know POZY_API_KEY, so the one row of before
-- is deleted rather than kept under a name the environment's key would have to adopt: a budget's state is soft (the
-- current window's grants, a pause, the lanes waiting, Pozy's last headers), and the first take of each key makes
-- its row again, which Pozy's X-RateLimit headers and 429s fill within a window. A sentinel row adopted by whatever
-- key starts first would hand one key's pause to another after a key rotation.
DELETE FROM "pozy_budget";

-- AlterTable
ALTER TABLE "pozy_budget" DROP CONSTRAINT "pozy_budget_pkey",
DROP COLUMN "id",
ADD COLUMN     "key_id" TEXT NOT NULL,
ADD CONSTRAINT "pozy_budget_pkey" PRIMARY KEY ("key_id");
