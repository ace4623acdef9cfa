/**
 * Colour on stderr only when it is a terminal and the person has not opted out: NO_COLOR (any non-empty
 * value, https://no-color.org) or TERM=dumb turn it off; FORCE_COLOR turns it on.
 */
function colourWanted(stream: NodeJS.WriteStream): boolean {
  if (process.env.NO_COLOR) return false;
  if (process.env.FORCE_COLOR && process.env.FORCE_COLOR !== '0') return true;
  return Boolean(stream.isTTY) && process.env.TERM !== 'dumb';
}

const wrap = (code: string) => (text: string) =>
  colourWanted(process.stderr) ? `\u001b[${code}m${text}\u001b[0m` : text;

export const paint = {
  error: wrap('31'),
  warning: wrap('33'),
};
