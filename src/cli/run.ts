// Runs the CLI with this process's arguments (the entry for tsx, the bundle and the executable).
import { main } from './main.js';

process.exitCode = await main(process.argv.slice(2));
