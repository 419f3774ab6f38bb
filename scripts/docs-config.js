// `npm run docs:config`: writes docs/configuration.md from the declarations of src/config/variables.ts (built into
// dist/ first). src/config/configuration-doc.spec.ts fails when the file differs from what this would write.
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { configurationDoc } = require('../dist/config/configuration-doc');

const path = join(__dirname, '..', 'docs', 'configuration.md');
writeFileSync(path, configurationDoc());
console.log(`Wrote ${path}`);
