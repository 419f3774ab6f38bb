/**
 * A reader of pgoutput, protocol version 1 (what Debezium's `plugin.name=pgoutput` and Sequin receive): the
 * messages `pg_logical_slot_get_binary_changes(slot, NULL, NULL, 'proto_version', '1', 'publication_names', …)`
 * answers, one per row. Relation messages name a table's columns; Insert, Update and Delete carry its rows as text.
 * https://www.postgresql.org/docs/15/protocol-logicalrep-message-formats.html
 */

export interface Relation {
  id: number;
  schema: string;
  table: string;
  /** `d` default (the primary key), `f` full, `i` an index, `n` nothing. */
  replicaIdentity: string;
  columns: { name: string; key: boolean; typeOid: number }[];
}

/** A row's columns by name: text, null, or `unchanged` (a TOASTed value the UPDATE did not write: not sent). */
export type Row = Record<string, string | null | { unchanged: true }>;

export type Change =
  | { kind: 'insert'; table: string; row: Row }
  /** `old`: the key columns (`K`) or the whole old row (`O`, REPLICA IDENTITY FULL), when the server sent it. */
  | { kind: 'update'; table: string; row: Row; old?: Row; oldKind?: 'key' | 'full' }
  | { kind: 'delete'; table: string; old: Row; oldKind: 'key' | 'full' }
  | { kind: 'truncate'; tables: string[] };

class Reader {
  private offset = 0;

  constructor(private readonly buffer: Buffer) {}

  byte(): string {
    return String.fromCharCode(this.buffer.readUInt8(this.offset++));
  }

  int8(): number {
    return this.buffer.readInt8(this.offset++);
  }

  int16(): number {
    const value = this.buffer.readInt16BE(this.offset);
    this.offset += 2;
    return value;
  }

  int32(): number {
    const value = this.buffer.readInt32BE(this.offset);
    this.offset += 4;
    return value;
  }

  skip(bytes: number): void {
    this.offset += bytes;
  }

  string(): string {
    const end = this.buffer.indexOf(0, this.offset);
    const value = this.buffer.toString('utf8', this.offset, end);
    this.offset = end + 1;
    return value;
  }

  text(length: number): string {
    const value = this.buffer.toString('utf8', this.offset, this.offset + length);
    this.offset += length;
    return value;
  }
}

/** Reads one slot's messages in order, keeping the relations they announced (each is sent before its first row). */
export class PgOutputDecoder {
  readonly relations = new Map<number, Relation>();

  /** The row changes among `messages` (Begin, Commit, Origin and Type messages aside). */
  decode(messages: readonly Buffer[]): Change[] {
    return messages.flatMap((message) => {
      const change = this.decodeOne(message);
      return change ? [change] : [];
    });
  }

  private decodeOne(message: Buffer): Change | undefined {
    const reader = new Reader(message);
    const kind = reader.byte();
    switch (kind) {
      case 'R': {
        const relation: Relation = {
          id: reader.int32(),
          schema: reader.string(),
          table: reader.string(),
          replicaIdentity: reader.byte(),
          columns: [],
        };
        const count = reader.int16();
        for (let i = 0; i < count; i += 1) {
          const key = (reader.int8() & 1) === 1;
          const name = reader.string();
          const typeOid = reader.int32();
          reader.skip(4); // atttypmod
          relation.columns.push({ name, key, typeOid });
        }
        this.relations.set(relation.id, relation);
        return undefined;
      }
      case 'I': {
        const relation = this.relation(reader.int32());
        if (reader.byte() !== 'N') throw new Error('pgoutput: an Insert without its new tuple');
        return { kind: 'insert', table: relation.table, row: this.tuple(reader, relation) };
      }
      case 'U': {
        const relation = this.relation(reader.int32());
        let tag = reader.byte();
        let old: Row | undefined;
        let oldKind: 'key' | 'full' | undefined;
        if (tag === 'K' || tag === 'O') {
          oldKind = tag === 'K' ? 'key' : 'full';
          old = this.tuple(reader, relation);
          tag = reader.byte();
        }
        if (tag !== 'N') throw new Error(`pgoutput: an Update without its new tuple (${tag})`);
        return { kind: 'update', table: relation.table, row: this.tuple(reader, relation), old, oldKind };
      }
      case 'D': {
        const relation = this.relation(reader.int32());
        const tag = reader.byte();
        if (tag !== 'K' && tag !== 'O') throw new Error(`pgoutput: a Delete without its old tuple (${tag})`);
        return { kind: 'delete', table: relation.table, old: this.tuple(reader, relation), oldKind: tag === 'K' ? 'key' : 'full' };
      }
      case 'T': {
        const count = reader.int32();
        reader.int8(); // options: CASCADE, RESTART IDENTITY
        const tables = Array.from({ length: count }, () => this.relation(reader.int32()).table);
        return { kind: 'truncate', tables };
      }
      case 'B': // Begin
      case 'C': // Commit
      case 'O': // Origin
      case 'Y': // Type
      case 'M': // a logical decoding message
        return undefined;
      default:
        throw new Error(`pgoutput: unknown message ${JSON.stringify(kind)}`);
    }
  }

  private relation(id: number): Relation {
    const relation = this.relations.get(id);
    if (!relation) throw new Error(`pgoutput: a row of relation ${id} before its Relation message`);
    return relation;
  }

  /** TupleData: the column count, then per column `n` (null), `u` (unchanged TOASTed value) or `t` (length, text). */
  private tuple(reader: Reader, relation: Relation): Row {
    const count = reader.int16();
    const row: Row = {};
    for (let i = 0; i < count; i += 1) {
      const name = relation.columns[i]?.name ?? `column${i}`;
      const tag = reader.byte();
      if (tag === 'n') row[name] = null;
      else if (tag === 'u') row[name] = { unchanged: true };
      else if (tag === 't') row[name] = reader.text(reader.int32());
      else throw new Error(`pgoutput: unknown column tag ${JSON.stringify(tag)} (binary values are not asked for)`);
    }
    return row;
  }
}
