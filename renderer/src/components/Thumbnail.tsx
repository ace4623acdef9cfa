/** A lazily read thumbnail: the bytes are fetched only once the row scrolls into view. */
import { useEffect, useRef, useState } from 'react';
import { useApp } from '../stores/appContext.js';

export function Thumbnail(props: { id: string; which: 'input' | 'output'; version?: string; alt: string }) {
  const { images } = useApp();
  const [url, setUrl] = useState<string | null>(null);
  const [visible, setVisible] = useState(typeof IntersectionObserver === 'undefined');
  const box = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (visible || !box.current) return;
    const io = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) setVisible(true);
    });
    io.observe(box.current);
    return () => io.disconnect();
  }, [visible]);

  useEffect(() => {
    if (!visible) return;
    let live = true;
    images.url(props.id, props.which, props.version).then(
      (u) => live && setUrl(u),
      () => live && setUrl(null),
    );
    return () => {
      live = false;
    };
  }, [visible, images, props.id, props.which, props.version]);

  return (
    <div ref={box} className="thumb">
      {url ? <img src={url} alt={props.alt} /> : null}
    </div>
  );
}
