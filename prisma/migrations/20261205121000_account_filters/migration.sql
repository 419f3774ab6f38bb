-- Written by hand: GET /accounts filters that match few accounts or none, in the list's order (id, workspace). Without
-- these, a platform no account is on, `connected=false` or `enabled=false` walked every account in id order to fill
-- a page. Accounts of a platform are walked in order on the first; the disconnected and the disabled ones, a few,
-- are found on their own partial indexes (the predicates are those of the list's conditions: accounts.query.ts).
CREATE INDEX "account_platform_id_workspace_id_idx" ON "account"("platform", "id", "workspace_id");

CREATE INDEX "account_disconnected_idx" ON "account"("id", "workspace_id") WHERE "is_active" = false OR "needs_reconnection" = true;

CREATE INDEX "account_disabled_idx" ON "account"("id", "workspace_id") WHERE "enabled" = false;
