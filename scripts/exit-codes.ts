/**
 * Prints README's exit-code table from src/errors.ts, the one place exit codes are declared
 * (`stemsplit --help` lists the same):
 *
 *   node --import tsx scripts/exit-codes.ts
 */
import { exitCodeMarkdown } from '../src/errors.js';

console.log(exitCodeMarkdown());
