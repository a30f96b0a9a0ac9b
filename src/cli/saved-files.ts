/**
 * The files a burst of watcher events saved: those that exist at the burst's end, and those deleted
 * that existed before it. sed -i and safe-writing editors (vim, JetBrains) write a temporary file
 * and rename it over the saved one; the temporary file comes and goes within the burst and is
 * neither named nor a reason to reload. On a loaded machine the watcher can report its removal (or
 * a late change) after the burst has ended: that names nothing either.
 */
export class SavedFiles {
  /** Paths touched since the last burst ended, and those of them created or removed meanwhile. */
  private readonly touched = new Set<string>();
  private readonly created = new Set<string>();
  private readonly removed = new Set<string>();
  /** Temporary files that came and went within an ended burst, their removal not yet reported. */
  private readonly vanished = new Set<string>();

  constructor(private readonly exists: (path: string) => boolean) {}

  /** One watcher event (chokidar's names); false when it is a temporary file's late echo, which starts no burst. */
  note(event: string, path: string): boolean {
    const creates = event === 'add' || event === 'addDir';
    const removes = event === 'unlink' || event === 'unlinkDir';
    if (this.vanished.has(path) && !creates) {
      if (removes) this.vanished.delete(path);
      return false;
    }
    this.vanished.delete(path);
    this.touched.add(path);
    if (creates) this.created.add(path);
    if (removes) this.removed.add(path);
    return true;
  }

  /** Ends the burst: the paths it saved, in the order first touched. */
  take(): string[] {
    const saved = [...this.touched].filter((path) => this.exists(path) || !this.created.has(path));
    for (const path of this.created) if (!this.exists(path) && !this.removed.has(path)) this.vanished.add(path);
    this.touched.clear();
    this.created.clear();
    this.removed.clear();
    return saved;
  }
}
