/**
 * dock's version: what `dock --version` and `dockd --version` print and what the box reports as its
 * build in `GET info`. A leaf, so the CLI can print it without loading anything else.
 *
 * @module
 */

/** The version of this build of dock. */
export const VERSION = "0.1.0";
