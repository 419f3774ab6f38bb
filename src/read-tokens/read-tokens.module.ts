import { Global, Module } from '@nestjs/common';
import { IssuedReadTokens } from '../common/read-access';
import { ReadTokenRegistry } from './read-token-registry.service';
import { ReadTokenRepository } from './read-token.repository';
import { ReadTokensController } from './read-tokens.controller';
import { ReadTokensService } from './read-tokens.service';

/**
 * Read tokens made through the admin API (`/admin/tokens`), each scoped to workspaces. Global: the read guards of
 * every module (common/read-access.ts) take the registry as IssuedReadTokens, the one way they learn of these tokens.
 */
@Global()
@Module({
  controllers: [ReadTokensController],
  providers: [ReadTokenRepository, ReadTokenRegistry, ReadTokensService, { provide: IssuedReadTokens, useExisting: ReadTokenRegistry }],
  exports: [IssuedReadTokens],
})
export class ReadTokensModule {}
