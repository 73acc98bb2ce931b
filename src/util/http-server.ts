// node:http's createServer, taken without an ES module import. Node builds the namespace of an imported
// built-in module by reading every export, and node:http's WebSocket, CloseEvent and MessageEvent
// exports are getters that load Node's bundled fetch and WebSocket client (undici): an `import … from
// 'node:http'` costs every kubediff that serves an endpoint about 13 MiB of resident memory (measured
// with Node 24) for code it never runs. process.getBuiltinModule returns the module itself, getters unread.
export const { createServer } = process.getBuiltinModule('node:http');
