/**
 * The GPU adapters a split could run on, found without loading ONNX Runtime (which would open
 * every driver): what the system's graphics drivers declare (Vulkan's ICD manifests on Linux)
 * paired with the graphics devices on the bus. ONNX Runtime's WebGPU provider (Dawn) asks the
 * same drivers for adapters and, with a hardware one present, takes it before a software one.
 *
 * Only Linux can be tried on this project's machines; the Windows (DirectML) and macOS (WebGPU on
 * Metal) paths are written from the platforms' documentation and untried on hardware (README).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

/** The ONNX Runtime execution provider that drives an adapter (onnxruntime-node's names). */
export type GpuProvider = 'webgpu' | 'dml' | 'coreml';

export interface GpuAdapter {
  /** What the driver calls it: "NVIDIA H200", "llvmpipe". */
  readonly name: string;
  /** The graphics API under the provider: Vulkan, D3D12, Metal. */
  readonly api: string;
  /** A software adapter (lavapipe/llvmpipe, SwiftShader, Microsoft Basic Render) runs on the CPU: `auto` never picks it. */
  readonly software: boolean;
  readonly provider: GpuProvider;
}

/** What was looked at, so a box with no adapter can say what it lacks. */
export interface AdapterSurvey {
  readonly adapters: readonly GpuAdapter[];
  /** Why no adapter was found, or an adapter's driver that cannot be used: one line each. */
  readonly missing: readonly string[];
}

export interface SurveyEnvironment {
  readonly platform: NodeJS.Platform;
  readonly env: NodeJS.ProcessEnv;
  /** Reads a file as text, undefined when it cannot be read (the file system, or a test's). */
  readonly readText: (path: string) => string | undefined;
  readonly listDir: (path: string) => readonly string[];
  readonly exists: (path: string) => boolean;
}

export function systemSurveyEnvironment(env: NodeJS.ProcessEnv = process.env): SurveyEnvironment {
  return {
    platform: process.platform,
    env,
    readText: (path) => {
      try {
        return readFileSync(path, 'utf8');
      } catch {
        return undefined;
      }
    },
    listDir: (path) => {
      try {
        return readdirSync(path);
      } catch {
        return [];
      }
    },
    exists: existsSync,
  };
}

/**
 * Names the provider to drive the adapters with instead of the platform's default (Windows:
 * `webgpu` on D3D12 instead of `dml`; macOS: `coreml` instead of `webgpu` on Metal).
 */
export const GPU_PROVIDER_ENV = 'STEMSPLIT_GPU_PROVIDER';
const PROVIDERS: readonly GpuProvider[] = ['webgpu', 'dml', 'coreml'];

/** The adapters of this machine. */
export function surveyAdapters(system: SurveyEnvironment = systemSurveyEnvironment()): AdapterSurvey {
  const survey = surveyPlatform(system);
  const chosen = system.env[GPU_PROVIDER_ENV];
  if (chosen === undefined || chosen === '') return survey;
  if (!(PROVIDERS as readonly string[]).includes(chosen)) {
    return { adapters: [], missing: [`${GPU_PROVIDER_ENV} must be one of ${PROVIDERS.join(', ')}, got "${chosen}"`] };
  }
  return { ...survey, adapters: survey.adapters.map((adapter) => ({ ...adapter, provider: chosen as GpuProvider })) };
}

function surveyPlatform(system: SurveyEnvironment): AdapterSurvey {
  if (system.platform === 'linux') return surveyVulkan(system);
  if (system.platform === 'win32') return surveyWindows(system);
  if (system.platform === 'darwin') return surveyMac(system);
  return { adapters: [], missing: [`no GPU provider of ONNX Runtime is known for ${system.platform}`] };
}

// ---- Linux: Vulkan (Dawn under ONNX Runtime's WebGPU provider) ----

/** PCI vendor ids of GPU makers, and the Vulkan drivers (by library name) that serve each. */
const VENDORS: ReadonlyArray<{ readonly id: string; readonly maker: string; readonly driver: RegExp }> = [
  { id: '0x10de', maker: 'NVIDIA', driver: /nvidia/i },
  { id: '0x1002', maker: 'AMD', driver: /radeon|amdvlk|amdgpu/i },
  { id: '0x8086', maker: 'Intel', driver: /intel/i },
];

/** Vulkan drivers that run on the CPU, and the adapter each shows. */
const SOFTWARE_DRIVERS: ReadonlyArray<{ readonly driver: RegExp; readonly name: string }> = [
  { driver: /lvp/i, name: 'llvmpipe' },
  { driver: /swiftshader/i, name: 'SwiftShader' },
];

const VULKAN_LOADER = 'libvulkan.so.1';
const LIBRARY_DIRS = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64', '/usr/lib', '/lib/x86_64-linux-gnu', '/lib64', '/usr/local/lib'];

function surveyVulkan(system: SurveyEnvironment): AdapterSurvey {
  const drivers = vulkanDrivers(system);
  const missing: string[] = [];
  if (!hasVulkanLoader(system)) {
    return { adapters: [], missing: [`no Vulkan loader (${VULKAN_LOADER}; Debian/Ubuntu: apt install libvulkan1)`] };
  }
  if (drivers.length === 0) missing.push('no Vulkan driver is installed (no ICD manifest in /usr/share/vulkan/icd.d or /etc/vulkan/icd.d)');
  const adapters: GpuAdapter[] = [];
  for (const device of pciGraphicsDevices(system)) {
    const vendor = VENDORS.find((v) => v.id === device.vendor);
    if (vendor === undefined) continue;
    const name = deviceName(system, vendor.maker, device);
    if (drivers.some((driver) => vendor.driver.test(driver))) adapters.push({ name, api: 'Vulkan', software: false, provider: 'webgpu' });
    else missing.push(`${name} has no Vulkan driver installed (${vendor.maker}'s Vulkan driver, e.g. ${vendorPackage(vendor.maker)})`);
  }
  for (const software of SOFTWARE_DRIVERS) {
    if (drivers.some((driver) => software.driver.test(driver))) adapters.push({ name: software.name, api: 'Vulkan', software: true, provider: 'webgpu' });
  }
  return { adapters, missing };
}

function vendorPackage(maker: string): string {
  if (maker === 'NVIDIA') return 'the NVIDIA driver with its Vulkan ICD';
  return 'mesa-vulkan-drivers';
}

function hasVulkanLoader(system: SurveyEnvironment): boolean {
  const dirs = [...(system.env['LD_LIBRARY_PATH'] ?? '').split(delimiter).filter(Boolean), ...LIBRARY_DIRS];
  return dirs.some((dir) => system.exists(join(dir, VULKAN_LOADER)));
}

/**
 * The library each Vulkan driver manifest names, found where the Vulkan loader looks: the
 * manifests VK_DRIVER_FILES (or the older VK_ICD_FILENAMES) names, which replace the search, else
 * the icd.d folders of /etc, XDG_CONFIG_DIRS, XDG_DATA_HOME and XDG_DATA_DIRS.
 */
function vulkanDrivers(system: SurveyEnvironment): string[] {
  const named = system.env['VK_DRIVER_FILES'] ?? system.env['VK_ICD_FILENAMES'];
  const manifests = named !== undefined && named !== '' ? named.split(delimiter).filter(Boolean) : searchedManifests(system);
  return manifests.flatMap((path) => {
    const library = manifestLibrary(system.readText(path));
    return library === undefined ? [] : [library];
  });
}

function searchedManifests(system: SurveyEnvironment): string[] {
  const { env } = system;
  const configDirs = (env['XDG_CONFIG_DIRS'] || '/etc/xdg').split(delimiter);
  const dataHome = env['XDG_DATA_HOME'] || join(env['HOME'] ?? homedir(), '.local/share');
  const dataDirs = (env['XDG_DATA_DIRS'] || '/usr/local/share:/usr/share').split(delimiter);
  const roots = [...configDirs.map((dir) => join(dir, 'vulkan')), '/etc/vulkan', join(dataHome, 'vulkan'), ...dataDirs.map((dir) => join(dir, 'vulkan'))];
  const seen = new Set<string>();
  return [...new Set(roots)].flatMap((root) => {
    const folder = join(root, 'icd.d');
    return system
      .listDir(folder)
      .filter((file) => file.endsWith('.json') && !seen.has(file) && seen.add(file))
      .map((file) => join(folder, file));
  });
}

function manifestLibrary(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  try {
    const manifest = JSON.parse(text) as { ICD?: { library_path?: unknown } };
    const library = manifest.ICD?.library_path;
    return typeof library === 'string' && library !== '' ? library : undefined;
  } catch {
    return undefined;
  }
}

interface PciDevice {
  readonly address: string;
  readonly vendor: string;
  readonly device: string;
}

/** Display controllers (PCI class 0x03: VGA, XGA, 3D controllers such as data-centre GPUs). */
function pciGraphicsDevices(system: SurveyEnvironment): PciDevice[] {
  const root = '/sys/bus/pci/devices';
  return system.listDir(root).flatMap((address) => {
    const read = (file: string) => system.readText(join(root, address, file))?.trim();
    const pciClass = read('class');
    const vendor = read('vendor');
    const device = read('device');
    if (pciClass === undefined || !pciClass.startsWith('0x03') || vendor === undefined || device === undefined) return [];
    return [{ address, vendor, device }];
  });
}

/** NVIDIA's driver names its GPUs in /proc; others are named by maker and PCI id. */
function deviceName(system: SurveyEnvironment, maker: string, device: PciDevice): string {
  if (maker === 'NVIDIA') {
    const info = system.readText(`/proc/driver/nvidia/gpus/${device.address}/information`);
    const model = info?.match(/^Model:\s*(.+)$/m)?.[1]?.trim();
    if (model) return model.startsWith('NVIDIA') ? model : `NVIDIA ${model}`;
  }
  return `${maker} GPU ${device.vendor.slice(2)}:${device.device.slice(2)}`;
}

// ---- Windows: DirectML over D3D12 (untried on hardware) ----

function surveyWindows(system: SurveyEnvironment): AdapterSurvey {
  // DirectML takes the default D3D12 adapter; Windows always has one, at worst Microsoft's software renderer.
  const root = system.env['SystemRoot'] ?? 'C:\\Windows';
  if (!system.exists(join(root, 'System32', 'd3d12.dll'))) return { adapters: [], missing: ['no Direct3D 12 (d3d12.dll) on this Windows'] };
  return { adapters: [{ name: 'the default Direct3D 12 adapter', api: 'DirectML', software: false, provider: 'dml' }], missing: [] };
}

// ---- macOS: WebGPU on Metal (untried on hardware) ----

function surveyMac(system: SurveyEnvironment): AdapterSurvey {
  // Every Mac that runs a current macOS has a Metal GPU (Apple Silicon's, or an Intel Mac's).
  if (!system.exists('/System/Library/Frameworks/Metal.framework')) return { adapters: [], missing: ['no Metal framework'] };
  const arm = process.arch === 'arm64';
  return { adapters: [{ name: arm ? 'Apple Silicon GPU' : 'the Mac GPU', api: 'Metal', software: false, provider: 'webgpu' }], missing: [] };
}
