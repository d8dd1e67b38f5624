// contained: ignores SIGTERM and SIGINT and spins; the time limit still ends it
process.on("SIGTERM", () => {});
process.on("SIGINT", () => {});
for (;;) {}
