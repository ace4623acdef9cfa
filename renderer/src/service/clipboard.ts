/**
 * Copy an image to the system clipboard. The async clipboard API takes PNG everywhere (JPEG and WebP
 * rarely), so other formats are re-encoded to PNG through a canvas first.
 */
export async function copyImageToClipboard(image: { mime: string; bytes: Uint8Array }): Promise<true> {
  if (typeof ClipboardItem === 'undefined' || !navigator.clipboard?.write) {
    throw new Error('This browser cannot put images on the clipboard: use Download instead.');
  }
  let blob = new Blob([image.bytes as BlobPart], { type: image.mime });
  if (image.mime !== 'image/png') {
    const bitmap = await createImageBitmap(blob);
    const canvas = document.createElement('canvas');
    canvas.width = bitmap.width;
    canvas.height = bitmap.height;
    canvas.getContext('2d')?.drawImage(bitmap, 0, 0);
    blob = await new Promise<Blob>((resolve, reject) =>
      canvas.toBlob(
        (b) => (b ? resolve(b) : reject(new Error('Could not convert the image for the clipboard.'))),
        'image/png',
      ),
    );
  }
  try {
    await navigator.clipboard.write([new ClipboardItem({ 'image/png': blob })]);
  } catch {
    throw new Error('The clipboard refused the image (the window must be focused): try again, or use Download.');
  }
  return true;
}
