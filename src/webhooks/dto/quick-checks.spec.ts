import fc from 'fast-check';
import { validateSync } from 'class-validator';
import { POST_EVENTS, ACCOUNT_EVENTS } from '../../receive/pozy-events';
import { PozyDeliveryHeadersDto } from './pozy-delivery-headers.dto';
import { PozyEventEnvelopeDto } from '../../receive/dto/pozy-event.dto';

/**
 * The receive path's quick checks (QuickCheck in common/validate-dto.ts) may only ever accept what the DTOs accept:
 * an envelope or a header set one of them lets through skips class-validator. Over arbitrary values, near-valid
 * ones included, acceptance implies the DTO's; and the check does accept Pozy's usual deliveries (else it saves nothing).
 */
const valid = (dto: object) => validateSync(dto, { forbidUnknownValues: true }).length === 0;

/** Strings around the limits (200 and 100 UTF-16 units; surrogate pairs, which MaxLength counts as one), and others. */
const text = fc.oneof(
  fc.string({ maxLength: 5 }),
  fc.string({ minLength: 95, maxLength: 105 }),
  fc.string({ minLength: 195, maxLength: 205 }),
  fc.string({ unit: 'grapheme', minLength: 90, maxLength: 110 }),
  fc.constant(''),
);
const anything = fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.array(fc.string(), { maxLength: 2 }));
const instant = fc.oneof(
  fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom('2026-11-29T10:15:30+01:00', '2026-11-29T10:15:30', '2026-11-29', '2026-02-30T00:00:00Z', '2026-W01', '2026-11-29T24:00:00Z'),
  anything,
);
const eventType = fc.oneof(fc.constantFrom(...POST_EVENTS, ...ACCOUNT_EVENTS, 'post.unknown'), anything);
const block = (fields: string[]) =>
  fc.oneof(fc.record(Object.fromEntries(fields.map((f) => [f, fc.oneof(text, anything)])), { requiredKeys: [] }), anything);

const envelope = fc.record(
  {
    id: fc.oneof(text, anything),
    event: eventType,
    timestamp: instant,
    test: fc.oneof(fc.boolean(), anything),
    post: block(['id']),
    account: block(['accountId', 'profileId']),
  },
  { requiredKeys: [] },
);

describe('the quick checks of the receive path', () => {
  it('accept an envelope only when PozyEventEnvelopeDto does', () => {
    let accepted = 0;
    fc.assert(
      fc.property(envelope, (body) => {
        const dto = PozyEventEnvelopeDto.fromJson(body);
        if (!PozyEventEnvelopeDto.quickCheck(dto)) return;
        accepted += 1;
        expect(valid(dto)).toBe(true);
      }),
      { numRuns: 5_000 },
    );
    expect(accepted).toBeGreaterThan(50);
  });

  it('accept delivery headers only when PozyDeliveryHeadersDto does', () => {
    const header = fc.oneof(
      text,
      fc.constantFrom('1', '12', '9999', '10000', '0', '01', ' 1'),
      fc.array(fc.string(), { maxLength: 2 }),
      fc.constant(undefined),
    );
    let accepted = 0;
    fc.assert(
      fc.property(
        fc.record({ 'x-pozy-event-id': header, 'x-pozy-delivery-id': header, 'x-pozy-attempt': header }, { requiredKeys: [] }),
        (headers) => {
          const dto = PozyDeliveryHeadersDto.fromHeaders(headers);
          if (!PozyDeliveryHeadersDto.quickCheck(dto)) return;
          accepted += 1;
          expect(valid(dto)).toBe(true);
        },
      ),
      { numRuns: 5_000 },
    );
    expect(accepted).toBeGreaterThan(50);
  });

  it("accept Pozy's usual deliveries", () => {
    const post = PozyEventEnvelopeDto.fromJson({
      id: 'evt_1',
      event: 'post.published',
      timestamp: '2026-11-29T10:15:30.000Z',
      post: { id: '66aa01f3c2b1e4d5f6a7b8c9', status: 'published' },
    });
    const account = PozyEventEnvelopeDto.fromJson({
      id: 'evt_2',
      event: ACCOUNT_EVENTS[0],
      timestamp: '2026-11-29T10:15:30Z',
      account: { accountId: 'a1', profileId: 'p1', platform: 'x' },
    });
    const test = PozyEventEnvelopeDto.fromJson({ id: 'evt_3', event: 'post.published', timestamp: '2026-11-29T10:15:30Z', test: true });
    for (const dto of [post, account, test]) expect(PozyEventEnvelopeDto.quickCheck(dto)).toBe(true);
    const headers = PozyDeliveryHeadersDto.fromHeaders({ 'x-pozy-event-id': 'evt_1', 'x-pozy-delivery-id': 'dlv_1', 'x-pozy-attempt': '3' });
    expect(PozyDeliveryHeadersDto.quickCheck(headers)).toBe(true);
  });
});
