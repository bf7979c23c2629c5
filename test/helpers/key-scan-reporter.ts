// Copies every console line the tests print into the run's log directory, for the key scan at the
// end of the run (key-scan-setup.ts).
import type { Reporter } from 'vitest/reporters';
import { appendTestLog } from './key-scan.js';

export default class KeyScanReporter implements Reporter {
  onUserConsoleLog(log: { content: string; type: 'stdout' | 'stderr'; taskId?: string }) {
    appendTestLog(
      'console.log',
      `[${log.type} ${log.taskId ?? '-'}] ${log.content}${log.content.endsWith('\n') ? '' : '\n'}`,
    );
  }
}
