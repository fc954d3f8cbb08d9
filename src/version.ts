/** The product version, kept in step with package.json by the test suite. */
export const VERSION = '0.1.0';
