// Runs the CLI with this process's arguments (the entry for tsx and the compiled build).
import { main } from './main.js';

process.exitCode = await main(process.argv.slice(2));
