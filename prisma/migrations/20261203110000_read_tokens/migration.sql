-- CreateTable
CREATE TABLE "read_token" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "all_workspaces" BOOLEAN NOT NULL,
    "workspaces" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(3),
    "deleted_at" TIMESTAMPTZ(3),

    CONSTRAINT "read_token_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "read_token_token_hash_key" ON "read_token"("token_hash");

-- CreateIndex
CREATE INDEX "read_token_created_at_id_idx" ON "read_token"("created_at", "id");


-- Written by hand (see the note at the top of schema.prisma): what the admin API validates, held by the table too,
-- so that a row written another way cannot make a token that reads nothing, or one the registry cannot match.
ALTER TABLE "read_token"
    ADD CONSTRAINT "read_token_name_length" CHECK (char_length("name") BETWEEN 1 AND 100),
    ADD CONSTRAINT "read_token_hash_format" CHECK ("token_hash" ~ '^[0-9a-f]{64}$'),
    -- Every workspace (an empty list), or at least one id and no NULL among them.
    ADD CONSTRAINT "read_token_scope" CHECK (
        "workspaces" IS NOT NULL AND CASE
            WHEN "all_workspaces" THEN cardinality("workspaces") = 0
            ELSE cardinality("workspaces") >= 1 AND array_position("workspaces", NULL) IS NULL
        END
    );
