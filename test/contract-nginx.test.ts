// The v1 contract, black-box, through the nginx front `isoatlas nginx-config` writes (Debian's nginx
// before `isoatlas serve`): the same suite as contract.test.ts (test/helpers/contract-suite.ts).
import { contractSuite } from './helpers/contract-suite.js';

contractSuite('nginx');
