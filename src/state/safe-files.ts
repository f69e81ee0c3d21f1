/** The task state's files are kept by the drivers' safe writes (one rule for every file cts keeps in a working dir). */
export { folderError, linkRefused, ownFolder, readKept, removeKept, writeKept } from "../driver/safe-files.ts";
