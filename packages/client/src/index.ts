export * from './client';
export * from './cursor-stores';
export * from './follow-changes';
export { partitionOf } from './partition';
