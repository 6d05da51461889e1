/**
 * One record of a CSV file read as a stream (RFC 4180, as Adyen writes its reports: a header line,
 * comma-separated fields, a field with a comma, a quote or a line break quoted, a quote inside one
 * doubled, records ending with CRLF or LF). `malformed` says why a record could not be read: its
 * fields are then not to be trusted, and the reader has moved on to the next line.
 */
export type CsvRecord = { line: number; fields: string[]; malformed?: string };

/** A record longer than this is malformed (an unclosed quote would otherwise swallow the file). */
const maxRecordChars = 64 * 1024;

/**
 * A CSV reader fed a download's bytes as they arrive (`push`), answering the records each piece
 * completed, so a report is never held whole in memory and what arrived is processed before the
 * rest does. `line` is the line a record starts on (1 = the header).
 */
export class CsvReader {
  private readonly decoder = new TextDecoder("utf-8");
  private fields: string[] = [];
  private field = "";
  private chars = 0;
  /** At the start of a field, in an unquoted one, in quotes, just after a quote in quotes. */
  private state: "start" | "plain" | "quoted" | "quote" = "start";
  private malformed?: string;
  /** After a malformed record: everything up to the next line break is skipped. */
  private skipping = false;
  private line = 1;
  private startLine = 1;
  private begun = false;

  push(chunk: Uint8Array | string): CsvRecord[] {
    const text = typeof chunk === "string" ? chunk : this.decoder.decode(chunk, { stream: true });
    const records: CsvRecord[] = [];
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      if (!this.begun) {
        this.begun = true;
        if (c === "\uFEFF") continue;
      }
      if (c === "\n") {
        this.line++;
        if (this.skipping || this.state !== "quoted") {
          this.skipping = false;
          this.endRecord(records);
          continue;
        }
      }
      if (this.skipping) continue;
      if (++this.chars > maxRecordChars) {
        this.fail(`longer than ${maxRecordChars} characters`);
        continue;
      }
      this.read(c);
    }
    return records;
  }

  /** The last record, when the file does not end with a line break. */
  end(): CsvRecord[] {
    const records: CsvRecord[] = [];
    const rest = this.decoder.decode();
    if (rest) records.push(...this.push(rest));
    if (this.state === "quoted" && !this.skipping) this.malformed = "a quote never closed";
    this.endRecord(records);
    return records;
  }

  private read(c: string): void {
    switch (this.state) {
      case "start":
      case "plain":
        if (c === ",") this.endField();
        else if (c === '"') {
          if (this.state === "start") this.state = "quoted";
          else this.fail("a quote inside an unquoted field");
        } else {
          this.field += c;
          this.state = "plain";
        }
        return;
      case "quoted":
        if (c === '"') this.state = "quote";
        else this.field += c;
        return;
      case "quote":
        if (c === '"') {
          this.field += '"';
          this.state = "quoted";
        } else if (c === ",") this.endField();
        else if (c !== "\r") this.fail("text after a closing quote");
    }
  }

  private endField(): void {
    this.fields.push(this.field);
    this.field = "";
    this.state = "start";
  }

  private fail(why: string): void {
    this.malformed ??= why;
    this.skipping = true;
  }

  private endRecord(records: CsvRecord[]): void {
    if (this.state === "plain" && this.field.endsWith("\r")) this.field = this.field.slice(0, -1);
    this.fields.push(this.field);
    const blank = this.fields.length === 1 && this.fields[0] === "" && !this.malformed;
    if (!blank) {
      const record: CsvRecord = { line: this.startLine, fields: this.fields };
      if (this.malformed) record.malformed = this.malformed;
      records.push(record);
    }
    this.fields = [];
    this.field = "";
    this.chars = 0;
    this.state = "start";
    this.malformed = undefined;
    this.startLine = this.line;
  }
}

/** A field as a CSV writer quotes it (the local Adyen server's reports). */
export const csvField = (value: string) =>
  /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
