// The state file's schema (SQLite): recognised by its application_id, versioned by PRAGMA user_version,
// and brought from any older version to this one by the numbered migrations below, applied in place in
// one transaction when the file is opened for writing (sqlite-database.ts).

/** 'KDif' as a 32-bit big-endian integer: how a kubediff state file is recognised. */
export const APPLICATION_ID = 0x4b446966;
export const SCHEMA_VERSION = 3;

/** Migrations: MIGRATIONS[v] takes a database from user_version v to v + 1. */
export const MIGRATIONS: readonly string[] = [
  // 0 → 1: the first schema.
  `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
   CREATE TABLE resources (
     resource TEXT PRIMARY KEY,            -- qualified name: deployments.apps
     type TEXT NOT NULL,                   -- the discovered ResourceType, JSON
     watched INTEGER NOT NULL DEFAULT 0,   -- 0: served but not selected
     listed INTEGER NOT NULL DEFAULT 0,    -- 1: its objects below are a complete inventory
     resource_version TEXT NOT NULL DEFAULT ''
   ) WITHOUT ROWID;
   CREATE TABLE objects (
     resource TEXT NOT NULL,
     key TEXT NOT NULL,                    -- namespace/name or name
     namespace TEXT,
     name TEXT NOT NULL,
     uid TEXT NOT NULL,
     resource_version TEXT NOT NULL,
     object TEXT NOT NULL,                 -- the normalized object, JSON
     PRIMARY KEY (resource, key)
   ) WITHOUT ROWID;
   CREATE TABLE events (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     id TEXT NOT NULL,
     time TEXT NOT NULL,
     type TEXT NOT NULL,
     event TEXT NOT NULL                   -- the event as reported, JSON
   );
   CREATE INDEX events_time ON events (time);`,
  // 1 → 2: events get their object's resource, namespace and name as columns, for `history` queries.
  `ALTER TABLE events ADD COLUMN resource TEXT NOT NULL DEFAULT '';
   ALTER TABLE events ADD COLUMN namespace TEXT;
   ALTER TABLE events ADD COLUMN name TEXT NOT NULL DEFAULT '';
   UPDATE events SET
     resource = json_extract(event, '$.object.resource') ||
       CASE WHEN instr(json_extract(event, '$.object.apiVersion'), '/') > 0
         THEN '.' || substr(json_extract(event, '$.object.apiVersion'), 1,
                            instr(json_extract(event, '$.object.apiVersion'), '/') - 1)
         ELSE '' END,
     namespace = json_extract(event, '$.object.namespace'),
     name = json_extract(event, '$.object.name');
   CREATE INDEX events_object ON events (resource, namespace, name);`,
  // 2 → 3: what the history's search looks in (search-text.ts), so that it reads no event's JSON. Older
  // events have none (NULL) and are searched in their JSON.
  `ALTER TABLE events ADD COLUMN search TEXT;`,
];
