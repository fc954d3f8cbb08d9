// Runs the CLI with this process's arguments (the entry for tsx and the compiled build).
import { main } from './main.js';
import { followParent, relaunch, shouldRelaunch } from './relaunch.js';

const args = process.argv.slice(2);
if (shouldRelaunch(args, process.env)) {
  process.exitCode = await relaunch([...process.execArgv, process.argv[1] ?? ''], args);
} else {
  followParent();
  process.exitCode = await main(args);
}
