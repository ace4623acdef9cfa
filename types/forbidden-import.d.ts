// engine/ and app/ are pure Node: their tsconfigs map 'electron' and 'react' here, so importing either
// from those layers is a compile error ("has no exported member") instead of a runtime surprise.
export {};
