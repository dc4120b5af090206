// The step protocol every TypeScript client driver speaks to sdkrec (see
// main.go): one JSON line when a step starts and one when it is done, with
// what the application concluded and after how many attempts.
export const say = (o) => process.stdout.write(JSON.stringify(o) + "\n");
export const now = () => new Date().toISOString();

// step runs fn, re-sending up to resend times after an error, and reports.
export async function step(name, fn, resend = 0) {
  say({ step: name, start: now() });
  let attempts = 0, got, detail;
  for (;;) {
    attempts++;
    try {
      const r = await fn();
      got = r.isError ? "tool_error" : "result";
      detail = JSON.stringify(r.content ?? "").slice(0, 200);
      break;
    } catch (e) {
      got = "call_error";
      detail = String(e).slice(0, 200);
      if (attempts > resend) break;
    }
  }
  say({ step: name, got, attempts, detail });
  return got;
}
