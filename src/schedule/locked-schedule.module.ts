import { Global, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { LockedSchedule } from './locked-schedule';

/** Nest's scheduler, and the jobs that run on one replica at a time over it (LockedSchedule), for every module. */
@Global()
@Module({
  imports: [ScheduleModule.forRoot()],
  providers: [LockedSchedule],
  exports: [LockedSchedule],
})
export class LockedScheduleModule {}
