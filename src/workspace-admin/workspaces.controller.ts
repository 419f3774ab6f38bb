import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, UseGuards } from '@nestjs/common';
import { ApiAcceptedResponse, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ResyncService } from '../admin/resync.service';
import { BackfillService } from '../backfill/backfill.service';
import { AdminTokenGuard } from '../common/admin-token.guard';
import { ApiError } from '../common/api-error';
import { ApiErrorResponse, ApiInvalidRequestResponse, ApiNotFoundErrorResponse } from '../common/error-body.dto';
import { ApiAdminAuth } from '../http/openapi';
import { SweepQuery } from '../runs/dto/sweep.query';
import { SweepService } from '../runs/import-and-sweep.service';
import {
  CreateWorkspaceDto,
  ListWorkspacesQuery,
  RemoveWorkspaceQuery,
  UpdateWorkspaceDto,
  WorkspaceIdParams,
  WorkspacePostParams,
  WorkspaceProfileParams,
} from './dto/workspace.dto';
import {
  WorkspaceDetailResponse,
  WorkspacePageResponse,
  WorkspaceRemovalResponse,
  WorkspaceResponse,
  WorkspaceResyncResponse,
  WorkspaceRunStartedResponse,
} from './dto/workspace.response';
import { WorkspaceView, WorkspacesService } from './workspaces.service';

@ApiTags('Admin: workspaces')
@ApiAdminAuth()
@Controller('admin/workspaces')
@UseGuards(AdminTokenGuard)
export class WorkspacesController {
  constructor(
    private readonly workspaces: WorkspacesService,
    private readonly resync: ResyncService,
    private readonly backfill: BackfillService,
    private readonly sweeps: SweepService,
  ) {}

  @Post()
  @ApiOperation({
    summary:
      'Add a Pozy workspace: its key is checked against Pozy, then it imports itself and follows its changes, on every replica within seconds.',
  })
  @ApiCreatedResponse({
    type: WorkspaceResponse,
    description: 'Added. `webhook.secret` appears only here, only when generated for a webhook you set up in Pozy yourself.',
  })
  @ApiInvalidRequestResponse('`id` not a slug, `apiUrl` not http(s), a key Pozy refuses (`apiKey`), an unknown field')
  @ApiErrorResponse({ workspace_exists: 'the id is taken', encryption_key_required: 'SECRETS_ENCRYPTION_KEY is not set' })
  @ApiErrorResponse({ pozy_unreachable: true, pozy_error: true })
  @ApiErrorResponse({ pozy_rate_limited: 'Pozy rate limited the key; nothing was stored' })
  create(@Body() body: CreateWorkspaceDto): Promise<WorkspaceView> {
    return this.workspaces.create(body);
  }

  @Get()
  @ApiOperation({ summary: 'The workspaces, oldest first, a page at a time (the environment’s `default` first).' })
  @ApiOkResponse({ type: WorkspacePageResponse })
  @ApiInvalidRequestResponse('`limit` is not 1 to 500, or `cursor` is not one this service returned')
  list(@Query() query: ListWorkspacesQuery): Promise<{ data: WorkspaceView[]; nextCursor: string | null }> {
    return this.workspaces.list(query.limit, query.cursor);
  }

  @Get(':id')
  @ApiOperation({ summary: "A workspace's state: import progress, last sweep and backfill, budget, reads waiting, its webhook's health, errors." })
  @ApiOkResponse({ type: WorkspaceDetailResponse })
  @ApiNotFoundErrorResponse('no workspace has this id')
  get(@Param() params: WorkspaceIdParams): Promise<WorkspaceView & Record<string, unknown>> {
    return this.workspaces.detail(params.id);
  }

  @Patch(':id')
  @ApiOperation({
    summary: 'Change a workspace: name, API key (checked against Pozy), budget, pause/resume, a webhook secret rotation with an overlap.',
  })
  @ApiOkResponse({ type: WorkspaceResponse })
  @ApiInvalidRequestResponse('a field out of range, a key Pozy refuses (`apiKey`), an unknown field')
  @ApiNotFoundErrorResponse('no workspace has this id')
  @ApiErrorResponse({ environment_workspace: '`default` is defined by the environment', workspace_removed: 'being removed or detached' })
  update(@Param() params: WorkspaceIdParams, @Body() body: UpdateWorkspaceDto): Promise<WorkspaceView> {
    return this.workspaces.update(params.id, body);
  }

  @Delete(':id')
  @HttpCode(202)
  @ApiOperation({
    summary:
      'Remove a workspace: its work stops on every replica, its managed webhook is removed in Pozy, its rows are deleted in the background (`keepData`: kept, readable).',
  })
  @ApiAcceptedResponse({ type: WorkspaceRemovalResponse, description: '`removing` (then gone) or `detached`.' })
  @ApiNotFoundErrorResponse('no workspace has this id')
  @ApiErrorResponse({ environment_workspace: '`default` is defined by the environment (POZY_API_KEY)' })
  remove(@Param() params: WorkspaceIdParams, @Query() query: RemoveWorkspaceQuery): Promise<{ runId: string; state: string }> {
    return this.workspaces.remove(params.id, query.keepData === true);
  }

  @Post(':id/resync/posts/:postId')
  @HttpCode(202)
  @ApiOperation({ summary: "Read one of the workspace's posts from Pozy now." })
  @ApiAcceptedResponse({ type: WorkspaceResyncResponse })
  @ApiErrorResponse({ not_found: 'no such workspace', unknown_to_pozy: 'Pozy does not know the post, and the mirror never held it' })
  async resyncPost(@Param() params: WorkspacePostParams): Promise<{ accepted: true; reconcile: string }> {
    this.workspaces.activeOne(params.id);
    return { accepted: true, reconcile: await this.resync.request('post', params.postId, params.id) };
  }

  @Post(':id/resync/profiles/:profileId/accounts')
  @HttpCode(202)
  @ApiOperation({ summary: "Read one of the workspace's profiles' accounts from Pozy now." })
  @ApiAcceptedResponse({ type: WorkspaceResyncResponse })
  @ApiNotFoundErrorResponse('no workspace has this id')
  async resyncProfile(@Param() params: WorkspaceProfileParams): Promise<{ accepted: true; reconcile: string }> {
    this.workspaces.activeOne(params.id);
    return { accepted: true, reconcile: await this.resync.request('profile', params.profileId, params.id) };
  }

  @Post(':id/backfill')
  @HttpCode(202)
  @ApiOperation({ summary: "Start a backfill of the workspace from Pozy's delivery logs now." })
  @ApiAcceptedResponse({ type: WorkspaceRunStartedResponse })
  @ApiErrorResponse({ backfill_running: 'one is running', workspace_not_active: 'paused or being removed' })
  async startBackfill(@Param() params: WorkspaceIdParams): Promise<{ runId: string }> {
    this.workspaces.activeOne(params.id);
    const result = await this.backfill.start('admin', params.id);
    if (!result.started) throw new ApiError('backfill_running', 'A backfill of this workspace is already running', { runId: result.runningRunId });
    return { runId: result.runId };
  }

  @Post(':id/sweep')
  @HttpCode(202)
  @ApiOperation({ summary: 'Start a full sweep of the workspace now (`dryRun`: count only).' })
  @ApiAcceptedResponse({ type: WorkspaceRunStartedResponse })
  @ApiErrorResponse({ sweep_running: 'a sweep or the import of this workspace is running', workspace_not_active: 'paused or being removed' })
  async startSweep(@Param() params: WorkspaceIdParams, @Query() query: SweepQuery, @Body() body: unknown): Promise<{ runId: string }> {
    if (body !== undefined) throw new ApiError('invalid_request', 'This takes no body: pass dryRun in the query (?dryRun=true)');
    this.workspaces.activeOne(params.id);
    const result = await this.sweeps.start('admin', query.dryRun === true, params.id);
    if (!result.started)
      throw new ApiError('sweep_running', 'A sweep or the import of this workspace is already running', { runId: result.runningRunId });
    return { runId: result.runId };
  }
}
