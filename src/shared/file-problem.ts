/** Why a file named on the command line or in a plan could not be read, in an operator's words. */
export function fileProblem(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EISDIR') return 'a directory, not a file';
  if (code === 'EACCES' || code === 'EPERM') return 'not readable (permission denied)';
  if (err instanceof TypeError) return 'not UTF-8 text';
  return (err as Error).message;
}
