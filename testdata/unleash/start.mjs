// Starts the real Unleash (unleash-server as pinned in package.json and
// package-lock.json, open-source build) for flagadmin's end-to-end tests,
// with the settings the fixture ../../../shared/fixtures/unleash-8.2.0 was
// made with (its README): AUTH_TYPE=open-source, TZ=UTC, NODE_ENV=production
// and the insecure start-up tokens below. Install it first with "npm ci".
//
//   node start.mjs postgres://user@host:5432/unleash_db 4260
//
// Unleash migrates the database at start (an empty database becomes a new
// Unleash), then listens on 127.0.0.1:PORT until SIGTERM or SIGINT. An
// Unleash environment variable set by the caller wins over the defaults
// here (the database URL and the port always come from the arguments).
// Version checks and telemetry are off: tests make no outside calls.
const [databaseURL, port] = process.argv.slice(2);
if (!databaseURL || !port) {
    console.error('usage: node start.mjs DATABASE_URL PORT');
    process.exit(2);
}

const defaults = {
    DATABASE_SSL: 'false',
    HTTP_HOST: '127.0.0.1',
    AUTH_TYPE: 'open-source',
    TZ: 'UTC',
    NODE_ENV: 'production',
    INIT_ADMIN_API_TOKENS: '*:*.unleash-insecure-admin-api-token',
    INIT_BACKEND_API_TOKENS: 'default:development.unleash-insecure-backend-api-token',
    INIT_FRONTEND_API_TOKENS: 'default:development.unleash-insecure-frontend-api-token',
    CHECK_VERSION: 'false',
    SEND_TELEMETRY: 'false',
    LOG_LEVEL: 'warn',
};
for (const [name, value] of Object.entries(defaults)) {
    process.env[name] ??= value;
}
process.env.DATABASE_URL = databaseURL;
process.env.HTTP_PORT = port;

const { start } = await import('unleash-server');
const unleash = await start();
for (const signal of ['SIGTERM', 'SIGINT']) {
    process.on(signal, async () => {
        await unleash.stop();
        process.exit(0);
    });
}
