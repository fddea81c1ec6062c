/** Whether root's dist/ holds a build no older than every source it was compiled from (bin/build-current.js). */
export function builtIsCurrent(root: string): boolean;
