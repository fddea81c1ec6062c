/**
 * An error with any `code`, for tests that need one a real module does not throw (a fake actor's
 * failure, a simulated crash). Real modules' errors are their own classes; Node's errno errors are
 * faked where they are needed, since those are what Node throws.
 */
export class CodedError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'CodedError';
  }
}
