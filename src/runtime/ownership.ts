/**
 * Shared cluster mode: which tasks this instance holds the owner lock of. Outside shared mode it
 * owns every task. The controller asks it before starting triggers or runs.
 */
export class Ownership {
  /** The owned tasks (undefined: every task, outside shared mode). */
  private owned: Set<string> | undefined;

  /** Whether this instance may run `name` now. */
  mine(name: string): boolean {
    return !this.owned || this.owned.has(name);
  }

  /** True in shared mode. */
  get shared(): boolean {
    return this.owned !== undefined;
  }

  /** From now on only owned tasks count (shared mode). */
  share(): void {
    this.owned ??= new Set();
  }

  /** The owned names, or `all` outside shared mode. */
  names(all: () => string[]): string[] {
    return this.owned ? [...this.owned] : all();
  }

  /** Marks a task owned; false when it already was, or outside shared mode. */
  take(name: string): boolean {
    if (!this.owned || this.owned.has(name)) return false;
    this.owned.add(name);
    return true;
  }

  /** Forgets a task; false when it was not owned. */
  release(name: string): boolean {
    return this.owned?.delete(name) ?? false;
  }

  /** Owns nothing any more (a paused instance takes tasks again one lock at a time). */
  clear(): void {
    this.owned?.clear();
  }

  /** The owned set for restore(), which leaves owned tasks alone (undefined outside shared mode). */
  get set(): ReadonlySet<string> | undefined {
    return this.owned;
  }
}
