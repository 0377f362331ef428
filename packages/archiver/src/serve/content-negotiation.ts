// HTTP content negotiation by the Accept header (RFC 9110, section 12.5.1): the offered media
// type with the highest quality, ties going to the server's order of preference.

export interface Offer<T> {
  mediaType: string;
  value: T;
}

/** The best offer for `accept` (an absent header takes the first offer); undefined: none is acceptable (406). */
export function negotiate<T>(accept: string | undefined, offers: ReadonlyArray<Offer<T>>): Offer<T> | undefined {
  if (accept === undefined || accept.trim() === '') return offers[0];
  const ranges = accept
    .split(',')
    .map((part) => {
      const [range = '', ...parameters] = part.split(';').map((piece) => piece.trim().toLowerCase());
      const q = parameters.find((parameter) => parameter.startsWith('q='));
      const quality = q === undefined ? 1 : Number(q.slice(2));
      return { range, quality: Number.isFinite(quality) ? quality : 0 };
    })
    .filter((entry) => entry.range !== '');
  let best: { offer: Offer<T>; quality: number; index: number } | undefined;
  offers.forEach((offer, index) => {
    const quality = qualityOf(offer.mediaType, ranges);
    if (quality > 0 && (!best || quality > best.quality)) best = { offer, quality, index };
  });
  return best?.offer;
}

/** The quality the most specific matching range gives a media type (0: not acceptable). */
function qualityOf(mediaType: string, ranges: ReadonlyArray<{ range: string; quality: number }>): number {
  const [type] = mediaType.split('/');
  let specificity = -1;
  let quality = 0;
  for (const { range, quality: q } of ranges) {
    const level = range === mediaType ? 2 : range === `${type}/*` ? 1 : range === '*/*' ? 0 : -1;
    if (level > specificity) {
      specificity = level;
      quality = q;
    }
  }
  return quality;
}
