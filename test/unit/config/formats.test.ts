// The config file's formats: every `format:` of the assembled schema (the file's and each sink type's
// entry) is a registered format, and every registered format is given at some key.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { allFormats } from '../../../src/config/formats.ts';
import { configSchema, SINK_TYPES, sinkSchemas } from '../../../src/config/schema.ts';

/** Every `format:` a schema gives, at any depth (a property named `format` is not one). */
function formatsIn(schema: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) for (const item of schema) formatsIn(item, found);
  else if (schema !== null && typeof schema === 'object') {
    for (const [key, value] of Object.entries(schema)) {
      if (key === 'format' && typeof value === 'string') found.add(value);
      else if (key === 'properties' && value !== null && typeof value === 'object')
        for (const property of Object.values(value)) formatsIn(property, found);
      else formatsIn(value, found);
    }
  }
  return found;
}

describe('config formats', () => {
  it('are registered for every format the schema gives, each once, and each given somewhere', () => {
    const given = formatsIn([configSchema, ...SINK_TYPES.map((type) => sinkSchemas[type])]);
    const registered = allFormats().map((format) => format.name);
    assert.equal(new Set(registered).size, registered.length, 'a format registered twice');
    assert.deepEqual([...given].sort(), [...registered].sort());
  });
});
