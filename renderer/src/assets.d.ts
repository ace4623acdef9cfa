/** Vite turns an imported image into its built URL. */
declare module '*.png' {
  const url: string;
  export default url;
}
