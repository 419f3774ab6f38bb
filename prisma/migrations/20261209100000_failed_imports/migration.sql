-- Written by hand: the imports whose latest attempt failed, counted for every workspace on each status read
-- (pozy_sync_workspaces_import_failed: SweepRunRepository.failedImports). A partial index holds only them, a few at
-- most, so the count costs the same at one workspace and at thousands, however many sweeps sweep_run keeps.
CREATE INDEX "sweep_run_import_failed_idx" ON "sweep_run"("workspace_id") WHERE "kind" = 'import' AND "status" = 'failed';
