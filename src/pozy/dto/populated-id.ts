/**
 * Pozy sends a reference either as a plain id or populated (`{ _id, ... }`), depending on the endpoint;
 * the mirror keeps the id.
 */
export const populatedId = ({ value }: { value: unknown }): unknown =>
  typeof value === 'object' && value !== null && '_id' in value ? value._id : value;
