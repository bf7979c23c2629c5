// The v1 contract, black-box, against `isoatlas serve` itself (test/helpers/contract-suite.ts).
import { contractSuite } from './helpers/contract-suite.js';

contractSuite('server');
