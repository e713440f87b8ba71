// peers/bind-loopback.mjs -- Node preload that keeps TCP servers on loopback.
//
//   node --import file:///abs/path/peers/bind-loopback.mjs SCRIPT ...
//
// Rewrites every net.Server#listen call (http/https servers and Express's
// app.listen inherit it) that would bind all interfaces -- no host given, or
// a wildcard host (0.0.0.0, ::, "") -- so that it binds 127.0.0.1 instead
// (override with MIS_BIND_HOST).  Explicit non-wildcard hosts, unix socket
// paths, handles and fds are left alone.
//
// Caveat: with a host, Node resolves it before binding, so server.address()
// is null until the 'listening' event.  Fine for server-everything; code that
// reads address() synchronously after listen(0) (the conformance runner's
// mock servers) must be confined with a network namespace instead.
import net from 'node:net';

const LOOPBACK = process.env.MIS_BIND_HOST || '127.0.0.1';
const WILDCARDS = new Set(['', '0.0.0.0', '::', '[::]', '::0', '0:0:0:0:0:0:0:0']);

const isPort = (v) =>
  v === undefined || v === null || typeof v === 'number' ||
  (typeof v === 'string' && /^\s*\d+\s*$/.test(v));

function rewrite(args) {
  const a0 = args[0];
  if (typeof a0 === 'function') {
    // listen(callback): random port on all interfaces
    return [0, LOOPBACK, ...args];
  }
  if (isPort(a0)) {
    // listen([port[, host[, backlog]]][, callback])
    const out = args.length === 0 ? [0] : [...args];
    if (typeof out[1] === 'string') {
      if (WILDCARDS.has(out[1].trim())) out[1] = LOOPBACK;
    } else {
      out.splice(1, 0, LOOPBACK);
    }
    return out;
  }
  if (a0 && typeof a0 === 'object' && a0.port !== undefined && a0.path === undefined &&
      a0.fd === undefined && a0.handle === undefined && a0._handle === undefined) {
    // listen(options[, callback])
    const host = a0.host;
    if (host === undefined || host === null ||
        (typeof host === 'string' && WILDCARDS.has(host.trim()))) {
      return [{ ...a0, host: LOOPBACK }, ...args.slice(1)];
    }
  }
  return args; // unix socket path, handle, fd, or an explicit host
}

const originalListen = net.Server.prototype.listen;
net.Server.prototype.listen = function listenOnLoopback(...args) {
  return originalListen.apply(this, rewrite(args));
};
