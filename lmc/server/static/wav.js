// Recorded audio (whatever MediaRecorder produced: webm/opus, ogg...) to a 16 kHz mono
// 16-bit PCM wav, the format lmc's voice input reads. The browser decodes, resamples and
// mixes down; this file only writes the RIFF header and samples.
"use strict";

const Wav = (() => {
  const RATE = 16000;

  function encode(samples, rate) {
    const buffer = new ArrayBuffer(44 + samples.length * 2);
    const view = new DataView(buffer);
    const text = (offset, s) => { for (let i = 0; i < s.length; i++) view.setUint8(offset + i, s.charCodeAt(i)); };
    text(0, "RIFF");
    view.setUint32(4, 36 + samples.length * 2, true);
    text(8, "WAVE");
    text(12, "fmt ");
    view.setUint32(16, 16, true);
    view.setUint16(20, 1, true); // PCM
    view.setUint16(22, 1, true); // mono
    view.setUint32(24, rate, true);
    view.setUint32(28, rate * 2, true);
    view.setUint16(32, 2, true);
    view.setUint16(34, 16, true);
    text(36, "data");
    view.setUint32(40, samples.length * 2, true);
    for (let i = 0; i < samples.length; i++) {
      const s = Math.max(-1, Math.min(1, samples[i]));
      view.setInt16(44 + i * 2, s < 0 ? s * 0x8000 : s * 0x7fff, true);
    }
    return buffer;
  }

  async function fromBlob(blob) {
    const data = await blob.arrayBuffer();
    const context = new AudioContext();
    let decoded;
    try {
      decoded = await context.decodeAudioData(data);
    } finally {
      context.close();
    }
    const frames = Math.max(1, Math.ceil(decoded.duration * RATE));
    const offline = new OfflineAudioContext(1, frames, RATE);
    const source = offline.createBufferSource();
    source.buffer = decoded;
    source.connect(offline.destination);
    source.start();
    const rendered = await offline.startRendering();
    return encode(rendered.getChannelData(0), RATE);
  }

  return { encode, fromBlob };
})();
