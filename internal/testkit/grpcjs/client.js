'use strict';
// A gRPC client written with Node's @grpc/grpc-js and @grpc/proto-loader:
// a client that shares no code with Go, for the tests (grpcjs.go runs it).
//
//   node client.js <host:port> <file.proto> <package.Service>
//
// It reads calls from stdin, one JSON object a line:
//   {"method": "Greet", "requests": [{...}], "metadata": {"k": "v"}, "timeoutMs": 5000}
// makes them one after another on one channel (plaintext), each as the
// proto says (unary, server stream, client stream or bidi stream), and
// prints one JSON line per call:
//   {"method": "Greet", "responses": [{...}], "code": 0, "details": ""}
// A bidi stream sends its next request only after the answer to the last,
// so the server must answer as messages come. A method the proto does not
// have is called as unary with an empty message.

const readline = require('readline');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const defaultTimeoutMs = 10000;

async function main() {
  const [target, protoFile, serviceName] = process.argv.slice(2);
  if (!serviceName) {
    process.stderr.write('usage: node client.js <host:port> <file.proto> <package.Service>\n');
    process.exit(2);
  }
  const def = protoLoader.loadSync(protoFile, { keepCase: true, longs: String, enums: String, defaults: false });
  const service = def[serviceName];
  if (!service) {
    process.stderr.write(`${serviceName} is not in ${protoFile}\n`);
    process.exit(2);
  }
  const client = new grpc.Client(target, grpc.credentials.createInsecure());
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim() === '') continue;
    const c = JSON.parse(line);
    const out = await call(client, serviceName, service[c.method], c);
    process.stdout.write(JSON.stringify(out) + '\n');
  }
  client.close();
}

function call(client, serviceName, m, c) {
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(c.metadata || {})) md.add(k, v);
  const opts = { deadline: Date.now() + (c.timeoutMs || defaultTimeoutMs) };
  const reqs = c.requests || [];
  const out = { method: c.method, responses: [], code: 0, details: '' };
  return new Promise((resolve) => {
    const fail = (err) => {
      out.code = err.code;
      out.details = err.details;
    };
    const answered = (err, res) => {
      if (err) fail(err);
      else out.responses.push(res);
      resolve(out);
    };
    if (!m) {
      const path = `/${serviceName}/${c.method}`;
      client.makeUnaryRequest(path, () => Buffer.alloc(0), (b) => b, {}, md, opts, (err) => {
        if (err) fail(err);
        resolve(out);
      });
      return;
    }
    if (!m.requestStream && !m.responseStream) {
      client.makeUnaryRequest(m.path, m.requestSerialize, m.responseDeserialize, reqs[0] || {}, md, opts, answered);
    } else if (!m.requestStream) {
      const s = client.makeServerStreamRequest(m.path, m.requestSerialize, m.responseDeserialize, reqs[0] || {}, md, opts);
      collect(s, out, resolve);
    } else if (!m.responseStream) {
      const s = client.makeClientStreamRequest(m.path, m.requestSerialize, m.responseDeserialize, md, opts, answered);
      for (const r of reqs) s.write(r);
      s.end();
    } else {
      const s = client.makeBidiStreamRequest(m.path, m.requestSerialize, m.responseDeserialize, md, opts);
      let sent = 0;
      const next = () => {
        if (sent < reqs.length) s.write(reqs[sent++]);
        else s.end();
      };
      s.on('data', next);
      collect(s, out, resolve);
      next();
    }
  });
}

// collect gathers a stream's responses and resolves once both the stream
// and its status have ended: grpc-js emits them in either order.
function collect(s, out, resolve) {
  let ended = false;
  let status = null;
  const check = () => {
    if (!ended || !status) return;
    if (status.code !== grpc.status.OK) {
      out.code = status.code;
      out.details = status.details;
    }
    resolve(out);
  };
  s.on('data', (r) => out.responses.push(r));
  s.on('error', () => { ended = true; check(); });
  s.on('end', () => { ended = true; check(); });
  s.on('status', (st) => { status = st; check(); });
}

main().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
