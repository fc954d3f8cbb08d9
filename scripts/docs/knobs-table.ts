/**
 * Prints docs/workflows.md's "The knobs" tables from the families' options tables
 * (contract/family.ts FamilyOption), one per family, so the page says what the code takes:
 * `node --import tsx scripts/docs/knobs-table.ts`.
 */
import { MODEL_FAMILIES } from '../../src/models/families.js';
import { flagAttribute, flagName } from '../../src/contract/family.js';
import { rangeOf } from '../../src/contract/option-table.js';

for (const family of MODEL_FAMILIES) {
  if (family.optionTable.length === 0) continue;
  console.log(`\n**${family.takers}** (\`${family.id}\`)\n`);
  console.log('| flag | API `modelOptions` | type and range | python-audio-separator | what it does |');
  console.log('|---|---|---|---|---|');
  for (const row of family.optionTable) {
    const spelling = row.separatorSpelling === undefined ? '' : `\`${row.separatorSpelling}\``;
    console.log(`| \`${flagName(row.flags)}\` | \`${flagAttribute(row.flags)}\` | ${rangeOf(row)} | ${spelling} | ${row.help.replaceAll('|', '\\|')} |`);
  }
}
